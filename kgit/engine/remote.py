"""A campaign between clones: which refs a campaign owns, their remote-tracking copies, and what
each side's campaign record says.

A campaign is its branches (`refs/heads/kgit/<c>/`: best, round-N, final), its record and kept
rounds (`refs/kgit/<c>/`) and its notes (`refs/notes/kgit/<c>/`); the tips chains
(`refs/kgit-tips/`) are shared by every campaign of a target. `kgit pull` fetches all of them from
a remote into remote-tracking refs, `refs/kgit-remotes/<remote>/<the ref without refs/>`, and
never straight onto the local refs: kgit/engine/sharing/pull.py decides from there what the clone takes.
git's own `refs/remotes/` is left to git (a plain clone fetches the branches there).
"""

from __future__ import annotations

from dataclasses import dataclass

from kgit.errors import KgitError, UsageError
from kgit.gitdoor import Repo
from kgit.records.names import NOTES_DIR, NOTES_README, STATE_FILE, CampaignRefs, parse_round_branch
from kgit.records.notes import CampaignState
from kgit.records.tips import TIPS_PREFIX

TRACKING = "refs/kgit-remotes/"
SALVAGE = "refs/kgit-salvage/"  # a clone's own campaign refs, kept when `pull --take-remote`
# The namespaces a campaign's refs live in, each followed by `<campaign>/`.
CAMPAIGN_SPACES = ("refs/heads/kgit/", "refs/kgit/", "refs/notes/kgit/")
HINT_TIMEOUT_S = 5.0  # asking a remote for a hint never hangs a command longer than this


def tracking_prefix(remote: str) -> str:
    return f"{TRACKING}{remote}/"


def tracking_ref(remote: str, ref: str) -> str:
    """Where REF (a full local name) of REMOTE is kept after a fetch."""
    return tracking_prefix(remote) + ref.removeprefix("refs/")


def refspecs(remote: str) -> list[str]:
    """What `kgit pull`/`push` fetch: every kgit ref of the remote, mirrored (forced, pruned)
    into its tracking refs; the local refs move only through kgit/engine/sharing/pull.py."""
    return [
        f"+{space}*:{tracking_ref(remote, space)}*" for space in (*CAMPAIGN_SPACES, TIPS_PREFIX)
    ]


def default_remote(repo: Repo) -> str:
    """The checked-out branch's upstream remote, else `origin`."""
    return repo.upstream_remote() or "origin"


def check_remote(repo: Repo, remote: str) -> str:
    names = repo.remote_names()
    if remote not in names:
        raise UsageError(
            f"no remote named {remote!r} in this repository",
            hint=(f"remotes here: {', '.join(names)}; " if names else "")
            + f"git remote add {remote} URL, or name one: kgit pull REMOTE",
        )
    if not repo.is_valid_ref_name(tracking_ref(remote, "refs/kgit/x")):
        raise UsageError(f"remote name {remote!r} cannot name a ref", hint="git remote rename")
    return remote


def fetch(repo: Repo, remote: str) -> None:
    repo.fetch(remote, refspecs(remote))


def campaign_refs(refs: dict[str, str], name: str) -> dict[str, str]:
    """The refs of campaign NAME among REFS (full local names -> sha)."""
    prefixes = tuple(f"{space}{name}/" for space in CAMPAIGN_SPACES)
    return {ref: sha for ref, sha in refs.items() if ref.startswith(prefixes)}


def local_refs(repo: Repo) -> dict[str, str]:
    """Every kgit ref of this clone, full name -> sha (one git call)."""
    found: dict[str, str] = {}
    for space in (*CAMPAIGN_SPACES, TIPS_PREFIX):
        found.update(repo.refs(space))
    return found


def remote_refs(repo: Repo, remote: str) -> dict[str, str]:
    """REMOTE's kgit refs as last fetched, under their names on the remote."""
    prefix = tracking_prefix(remote)
    return {"refs/" + ref.removeprefix(prefix): sha for ref, sha in repo.refs(prefix).items()}


def campaigns_in(refs: dict[str, str]) -> list[str]:
    """The campaigns whose record is among REFS."""
    names = []
    for ref in refs:
        parts = ref.split("/")
        if len(parts) == 4 and parts[1] == "kgit" and parts[3] == "campaign":
            names.append(parts[2])
    return sorted(names)


def tips_refs(refs: dict[str, str]) -> dict[str, str]:
    return {ref: sha for ref, sha in refs.items() if ref.startswith(TIPS_PREFIX)}


@dataclass(frozen=True)
class RecordAt:
    """What one commit of a campaign record holds: its state and its notes listings."""

    commit: str
    state: CampaignState
    sealed: bool  # the record keeps its notes (notes/README)
    notes: dict[str, dict[str, str]]  # kind -> target -> blob

    @classmethod
    def read(cls, repo: Repo, commit: str, kinds: tuple[str, ...]) -> RecordAt:
        names = [f"{commit}:{STATE_FILE}", f"{commit}:{NOTES_README}"]
        names += [f"{commit}:{NOTES_DIR}/{kind}" for kind in kinds]
        state, readme, *listings = repo.read_objects(names)
        if state is None:
            raise KgitError(
                f"{commit[:10]} is not a kgit campaign record (no {STATE_FILE})",
                hint="git log --stat on it shows what it is",
            )
        notes = {
            kind: {t: sha for t, (_mode, sha) in Repo.parse_tree(found[1]).items()} if found else {}
            for kind, found in zip(kinds, listings, strict=True)
        }
        return cls(commit, CampaignState.from_json(state[1]), readme is not None, notes)

    def round_branch_closed(self, ref: str) -> bool:
        """Whether REF is a round branch of a round this record has closed."""
        parsed = parse_round_branch(ref)
        if parsed is None:
            return False
        number = parsed[1]
        return number < self.state.next_round and self.state.open_numbered(number) is None


@dataclass
class Sides:
    """One campaign's refs here and on the remote (full local names -> sha)."""

    name: str
    remote: str
    ours: dict[str, str]
    theirs: dict[str, str]

    @property
    def refs(self) -> CampaignRefs:
        return CampaignRefs(self.name)


def remote_campaign_hint(repo: Repo) -> str | None:
    """For a clone with no campaign: `kgit pull REMOTE` when a remote holds one (its tracking
    refs, else asking the default remote, briefly)."""
    for remote in repo.remote_names():
        if campaigns_in(remote_refs(repo, remote)):
            return f"kgit pull {remote} (it holds campaign records: refs/kgit/*)"
    remote = default_remote(repo)
    if remote not in repo.remote_names():
        return None
    found = repo.ls_remote(remote, ["refs/kgit/*"], HINT_TIMEOUT_S)
    if found and campaigns_in(found):
        names = ", ".join(campaigns_in(found))
        return f"kgit pull {remote} (it holds campaign(s) {names})"
    return None


def record_ref(name: str) -> str:
    return CampaignRefs(name).record
