"""A session's history read back: its recording, its conversation, the search index over all of them.

May import `errors`, `paths`, `portable`, `values`, `visible` and `gitcmd`: it knows the files
sessions leave (records, recordings, transcripts), never the proxy, the injector or the hooks.
"""
