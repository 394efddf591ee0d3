"""What every paper table builds on: result files (``results``), seeds (``seeding``), splits and
their feature files (``splits``), a job's settings as one object (``job``) and its checkpointed
fits (``fit_cache``), and for its report page the HTML cells (``cells``), paired tests
(``significance``), figure saving (``figures``) and the sensitivity tables' page
(``sensitivity``).  Generic: no module here names a paper."""
