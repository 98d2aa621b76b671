# Sourced by the run and test scripts: keep everything offline and quiet.
export HF_HUB_OFFLINE=1
export TRANSFORMERS_OFFLINE=1
export HF_HUB_DISABLE_TELEMETRY=1
export GRADIO_ANALYTICS_ENABLED=False
export ANONYMIZED_TELEMETRY=False
export TOKENIZERS_PARALLELISM=false
export RAY_USAGE_STATS_ENABLED=0
