"""The vendored projects under projects/ are users' repositories, each with its own tests,
conftest.py and pytest settings: kgit's own test run does not collect them (their tests run as
the gates of the campaigns in test_campaigns.py, inside copies of each project)."""

collect_ignore = ["projects"]
