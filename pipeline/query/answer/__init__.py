"""What answering modes share, importing no mode: the answer context and its citations to document
offsets and pages, the passage answer of basic and lazy search, prompt text and token budgets, the
front matter kept out of answers, and the offline relevance rating."""
