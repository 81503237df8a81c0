"""Answers: candidate models (and offline baselines) reply to each case as the candidate sees it."""
