"""M4N (Nowak-Vila, Bach, Rudi, ICML 2020): the ordinal-regression Tables 1 and 2 and their variants (``tables``), the
ordinal protocol's sensitivity table (``protocol``) and their report page (``report``)."""
