"""One module per block of ``summary.json``: the models the analysis fills in and presentation reads."""
