"""The read-only face of a campaign that the views get (the interface: kgit/records/reader.py).

It holds the `Campaign` but hands out only what reads, so a view cannot write the record, move
a ref or reach the write lock."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kgit.engine.campaign import Campaign
from kgit.records.manifest import Manifest
from kgit.records.names import CampaignRefs
from kgit.records.notes import CampaignState, RoundNote
from kgit.records.reader import ChangedFiles


class CampaignReader:
    """`RecordReader` over a loaded `Campaign`."""

    def __init__(self, campaign: Campaign) -> None:
        self._campaign = campaign
        self._repo = campaign.repo

    @property
    def name(self) -> str:
        return self._campaign.name

    @property
    def manifest(self) -> Manifest:
        return self._campaign.manifest

    @property
    def state(self) -> CampaignState:
        return self._campaign.state

    @property
    def refs(self) -> CampaignRefs:
        return self._campaign.refs

    @property
    def record_sha(self) -> str:
        return self._campaign.record_sha

    def policy_words(self) -> str:
        # Here and in note_problems, not at the top: `kgit log` reads the campaign through this
        # class and needs neither the policies nor the notes refs' comparison.
        from kgit.engine.measuring.policies.policy import policy_of

        return policy_of(self.manifest).words(self.manifest.thresholds)

    def best_commit(self) -> str:
        return self._campaign.best_at_load or self._campaign.best_tip()

    def best_line(self) -> list[str]:
        return self._repo.rev_list(self.best_commit(), first_parent=True)

    def all_rounds(self, with_shapes: bool = True) -> list[tuple[str, RoundNote]]:
        return self._campaign.all_rounds(with_shapes)

    def recorded(self, kind: str) -> dict[str, str]:
        return self._campaign.recorded(kind)

    def note_problems(self, kinds: Iterable[str]) -> dict[str, list[str]]:
        from kgit.engine.guards.seal import problems_by_commit

        return problems_by_commit(self._campaign, kinds)

    def read_blobs(self, shas: Sequence[str]) -> dict[str, bytes]:
        return self._repo.read_blobs(shas)

    def read_objects(self, names: Sequence[str]) -> list[tuple[str, bytes] | None]:
        return self._repo.read_objects(names)

    def record_files(self) -> dict[str, bytes]:
        return self._repo.read_tree_files(self._campaign.record_sha)

    def diffstats(
        self, pairs: Sequence[tuple[str, str]], paths: Sequence[str] = ()
    ) -> dict[str, str]:
        return self._repo.diffstats(pairs, paths)

    def commit_messages(self, shas: Sequence[str]) -> dict[str, str]:
        return self._repo.commit_messages(shas)

    def change_files(self, old: str, new: str) -> ChangedFiles:
        # Here, not at the top: the module brings rule 11's scanners, which `kgit status` and
        # `kgit log` never use.
        from kgit.engine.guards.rule11_scan import change_files

        return change_files(self._repo, old, new)
