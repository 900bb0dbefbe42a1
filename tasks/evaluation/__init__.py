"""Evaluation: QA accuracy, coreference (CoNLL) and language-model scoring."""
