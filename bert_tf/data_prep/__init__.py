"""Dataset → features / TFRecords (GLUE, SQuAD, pre-training), one module per family."""
