"""Interoperability with Microsoft GraphRAG: reading the output folder of `graphrag index` (2.x, 3.x)
into our tables (`ms_graphrag_read`, `ms_graphrag_convert`), and the LanceDB tables its query engine
looks for under its default names (`ms_graphrag_export`)."""
