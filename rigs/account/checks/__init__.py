"""The doctor's checks, one module per check: each answers its one question (its function, and its entry for
the registry: the name of its rows, what it runs for); :mod:`rigs.account.doctor` lists them in the order they
are reported, runs them and renders their findings. :mod:`.base` is what every check is given and gives."""
