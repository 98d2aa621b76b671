"""Topic discovery: clusters of the papers' abstract vectors with readable labels, learned membership of the
hand-written topics, quality reports and the trending ranking.

`clusters` finds topics and tags papers, `labels` names them, `membership` widens hand-written topics,
`quality` samples and scores them, `trending` ranks every topic's momentum.
"""
