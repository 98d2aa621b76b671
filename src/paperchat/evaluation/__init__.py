"""Evaluation: question sets, metrics, runner, reports; the BEIR (SciFact) retrieval benchmark."""
