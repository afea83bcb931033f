"""Tools the model can call."""
