"""`python -m knowledge_build.cli`: the same command as `knowledge-build`."""

from . import main

main()
