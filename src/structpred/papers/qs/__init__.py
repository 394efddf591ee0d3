"""QS (Ciliberto, Rosasco, Rudi, NeurIPS 2016): USPS digit reconstruction (``usps``), MovieLens
ranking (``movielens``, with the pairwise rankers it compares, ``pairwise_rankers``), robust
regression (``robust``), their sensitivity tables and their report page (``report``)."""
