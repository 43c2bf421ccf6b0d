"""Dense retrieval: vector stores (Milvus, exact in-memory / in-graph) behind one interface."""
