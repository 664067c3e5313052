"""The project's kit: the generic pieces every package uses and none owns.

Files written whole (:mod:`.files`), one wait (:mod:`.waiting`), child processes and their guard (:mod:`.processes`,
:mod:`.guard`), UTC times (:mod:`.utc`), committed generated files (:mod:`.generated`) and the command kit
(:mod:`.command`). It imports nothing of ``rigs/``, ``agent/`` or ``stacks/``, which all import it.
"""
