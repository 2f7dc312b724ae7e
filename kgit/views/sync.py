"""What `kgit pull` and `kgit push` did, in words (their --json is the data itself)."""

from __future__ import annotations

from kgit.records.sharing_results import Pulled, Pushed

_PULLED = {
    "created": "taken from {remote} (new here)",
    "fast-forward": "fast-forwarded to {remote}'s record",
    "up to date": "up to date with {remote}",
    "ahead": "ahead of {remote} (kgit push publishes it)",
    "taken": "{remote}'s record taken; this clone's refs kept under {salvaged}",
}


def render_pull(data: Pulled) -> str:
    remote = data.remote
    lines = []
    for c in data.campaigns:
        name = c["campaign"]
        said = _PULLED[c["result"]].format(remote=remote, salvaged=c["salvaged"])
        record = c["record"]["new"] or "-"
        upto = c["next_round"] - 1
        lines.append(f"campaign {name}: {said}; record {record[:10]}, rounds up to round-{upto}")
        if c["open_round"] is not None:
            lines.append(f"  round-{c['open_round']} is in progress (kgit status)")
        moved = len(c["moved"]) + len(c["deleted"])
        if moved:
            lines.append(f"  {moved} ref(s) updated")
        lines += [
            f'  set aside: your round-{r["round"]} "{r["hypothesis"]}" ({r["status"]}, '
            f'{r["commit"][:10]}); to try it again: kgit round start "{r["hypothesis"]}", then '
            f"git cherry-pick {r['commit'][:10]}"
            for r in c["set_aside"]
        ]
        lines += [f"  warning: {w}" for w in c["warnings"]]
        if c["notes_not_taken"]:
            targets = ", ".join(n["target"][:10] for n in c["notes_not_taken"][:5])
            lines.append(
                f"  warning: {len(c['notes_not_taken'])} note(s) on {remote}'s notes refs that "
                f"its record does not hold were not taken (on {targets}): kgit reads its notes "
                "from the record"
            )
        if not c["trusted"]:
            lines.append(
                f"  not trusted here: nothing runs its commands until kgit trust --campaign {name}"
            )
        if not c["gate_installed"]:
            lines.append(
                "  the commit gate is not installed in this clone: kgit hooks install"
                + (" (after kgit trust)" if not c["trusted"] else "")
            )
    tips = data.tips
    if tips["updated"]:
        lines.append(f"tips: {len(tips['updated'])} chain(s) updated")
    lines += [f"warning: tips file on both sides with other contents (ours kept): {t}"
              for t in tips["clashes"]]  # fmt: skip
    if not data.campaigns:
        lines.append(f"{remote} holds no kgit campaign")
    lines.append(f"next: {pull_next(data)}")
    return "\n".join(lines)


def pull_next(data: Pulled) -> str:
    for c in data.campaigns:
        if not c["trusted"]:
            return f"kgit log -c {c['campaign']}; kgit trust --campaign {c['campaign']}"
        if not c["gate_installed"]:
            return "kgit hooks install"
    return "kgit status"


_PUSHED = {
    "created": "published on {remote}",
    "fast-forward": "{remote} fast-forwarded",
    "up to date": "up to date on {remote}",
    "behind": "{remote} is ahead: nothing to push (kgit pull takes its rounds)",
}


def render_push(data: Pushed) -> str:
    remote = data.remote
    lines = [
        f"campaign {c['campaign']}: {_PUSHED[c['result']].format(remote=remote)}; record "
        f"{c['record'][:10]}"
        for c in data.campaigns
    ]
    lines.append(f"{len(data.pushed)} ref(s) pushed" if data.pushed else "nothing to push")
    return "\n".join(lines)
