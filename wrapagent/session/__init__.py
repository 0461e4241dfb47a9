"""One wrapped session end to end: the lifecycle, records and the sessions repository, finding the
real binary; checkpoints, transcripts and turns.

The only layer that ties proxy, inject and hooks together; may import all three, never `commands`.
"""
