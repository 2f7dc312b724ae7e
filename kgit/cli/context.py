"""A command's context: the campaign it is for (-c), quiet (-q), and the repository, opened once.
No click here: the light commands run on it without loading click (kgit/cli/quick.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kgit import progress

if TYPE_CHECKING:
    from kgit.engine.campaign import Campaign
    from kgit.engine.read_only import CampaignReader
    from kgit.gitdoor import Repo


class Ctx:
    def __init__(self, campaign: str | None, quiet: bool) -> None:
        self.campaign_name = campaign
        self.quiet = quiet
        self._repo: Repo | None = None

    def repo(self) -> Repo:
        from kgit.gitdoor import open_repo

        if self._repo is None:
            self._repo = open_repo()
        return self._repo

    def campaign(self, *, branch: str | None = None) -> Campaign:
        """The campaign the command is for (BRANCH: the checked-out branch, where the caller
        read it already)."""
        from kgit.engine.campaign import Campaign, resolve_campaign

        repo = self.repo()
        return Campaign.load(repo, resolve_campaign(repo, self.campaign_name, branch=branch))

    def reader(self) -> CampaignReader:
        """The campaign, read-only: what a view gets (kgit/records/reader.py)."""
        from kgit.engine.read_only import CampaignReader

        return CampaignReader(self.campaign())

    def say(self, message: str) -> None:
        if not self.quiet:
            progress.say(message)

    @property
    def voice(self) -> progress.Voice:
        """What the command says, and whether its harnesses' and tests' output is shown: both
        silenced by -q."""
        return progress.Voice(self.say, echo=not self.quiet)

    def long_step(self) -> None:
        """This command runs harnesses or tests for a while: on a terminal, a live line shows
        the step in progress and its elapsed time (kgit/progress.py)."""
        progress.start(self.quiet)
