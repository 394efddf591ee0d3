"""AGM (Fathony et al., NeurIPS 2018): the emotion-intensity table (``emotion``), semantic role labelling
(``srl``) and its decoding sensitivity (``srl_decoding``), and their report page (``report``)."""
