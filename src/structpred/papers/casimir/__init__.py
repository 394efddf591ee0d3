"""Casimir (Pillutla et al., NeurIPS 2018): the NER curve figures (``ner``) and their tuned variant (``tuned``),
every chain method on its NER task at a held-out lambda (``ner_heldout``, the matrix's NER column),
the VOC localisation figures (``voc``, ``voc_nonconvex``), the names both share (``names``) and
their report pages (``report``, ``voc_report``)."""
