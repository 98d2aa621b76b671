"""Readers we train ourselves (issue 35): small cross-encoders that read a question against a sentence, their training data and their ONNX runtime."""
