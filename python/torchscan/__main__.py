"""``python -m torchscan``: the demo and the summary of a user's model."""

from ._demo import main

raise SystemExit(main())
