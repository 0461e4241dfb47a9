"""One wrapped session end to end while it runs: the lifecycle, finding the real binary, the
conversation, turns, the stop check and `[send]`.

The only layer that ties proxy, inject and hooks together; may import all three and `history`
(records, checkpoints, transcripts), never `commands`.
"""
