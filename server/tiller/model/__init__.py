"""The model layer: the ``Provider`` protocol and its Anthropic SDK implementation, the
scripted demo provider, the model catalog and the usage ledger."""
