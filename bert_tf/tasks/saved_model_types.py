"""The model types export_saved_model.py exports, importable without TensorFlow.

export_saved_model.py lists them in its --model_type flag, which `--help`
shows before TensorFlow is imported; `bert_tf.tasks.saved_model_export`
builds the model of each type:

- classifier: a run_classifier output (`BertClassifier`);
- span: a run_squad output (`BertSpanLabeler`);
- encoder: any checkpoint, sequence and pooled outputs (`BertEncoder`);
- tagger: a run_ner output (`BertTokenClassifier`);
- embedding: a sentence encoder (`BertSentenceEncoder`: a sentence-transformers
  directory, e.g. a run_similarity output's, or a BERT checkpoint with --pooling);
- reranker: a cross-encoder (`BertReranker`: a sentence-transformers CrossEncoder /
  one-label BertForSequenceClassification directory, or our checkpoint of one);
- retrieval: a dual encoder (a run_retrieval output_dir or a sentence-transformers
  directory) over a BEIR corpus embedded at export (`CorpusIndex`), optionally with a
  cross-encoder second stage.
"""

MODEL_TYPES = (
    "classifier",
    "span",
    "encoder",
    "tagger",
    "embedding",
    "reranker",
    "retrieval",
)
