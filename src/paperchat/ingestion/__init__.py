"""Sources (arXiv records, PDFs) -> pages -> chunks -> vectors -> store."""
