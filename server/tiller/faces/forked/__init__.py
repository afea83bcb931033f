"""A client's side of the warm start: finding the user's template (``place``) and asking it for
a server of its own (``client``). The template itself is ``tiller.warm``."""
