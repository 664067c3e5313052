"""One module per block of ``summary.json``, each a pure function of records (and ``run.json``)."""
