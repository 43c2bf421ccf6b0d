"""Metrics, each the standard definition: classification, entity (conlleval), retrieval (trec_eval), similarity, SQuAD."""
