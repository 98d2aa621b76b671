"""Backends behind small interfaces: embedders and answerers, each chosen by a string."""
