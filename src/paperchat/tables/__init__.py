"""Comparison tables: one row per paper, one column per question, every cell a quote with its page.

`columns` says what a table is, `builder` reads the cells (the sentence reader and the cell picker of `cells`),
`cache` keeps them, `train` fits the cell picker.
"""
