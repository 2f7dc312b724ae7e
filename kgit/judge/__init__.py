"""Judgement: scoring, the decision rules and shape selection. Pure functions over records."""
