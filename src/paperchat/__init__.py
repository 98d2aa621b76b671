"""paperchat: an open-source research assistant over papers.

`import paperchat` stays light: torch, gradio and chromadb load only when used.
"""

__version__ = "0.1.0"
