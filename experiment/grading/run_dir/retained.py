"""The retained files: the evidence manifest against evidence/ and RESULT (EVID-*) and the credential scan
(SEC-1)."""

from __future__ import annotations

import hashlib

from experiment.contract.run_layout import EVIDENCE_DIR, MANIFEST_FILE
from experiment.grading.common import short
from experiment.grading.secrets import HEADER_WITH_VALUE, SIGNED_URL, environment_secrets, searchable_text
from experiment.grading.general import EVID_3, EVID_4, EVID_6, EVID_7
from experiment.grading.registry import run_dir_checks
from experiment.grading.run_dir.files import text_key


class RetainedFileChecks:
    """The retained files: the evidence manifest against evidence/ and RESULT (EVID-*) and the credential scan."""

    # ---- evidence (EVID-*) ----

    @run_dir_checks(
        ("evidence.caps", "EVID-3", "evidence within its caps", EVID_3),
        ("evidence.names", "EVID-7", "evidence/manifest.json lists each name once: one name, one content", EVID_7),
        ("evidence.missing_file", "EVID-8", "every manifest file is in evidence/"),
        ("evidence.immutable", "EVID-8", "every evidence file on disk still hashes to its manifest sha256 (a run directory's "
                                         "own: a bare record has no file beside its manifest)"),
        ("evidence.unlisted", "EVID-8", "every file in evidence/ is in the manifest"),
        ("evidence.required_kinds", "EVID-4", "a succeeded run retains the required evidence kinds", EVID_4),
        ("evidence.checkpoints", "EVID-6", "checkpoints are tinker:// references, listed once, every scored one listed", EVID_6),
        ("evidence.result_files", "EVID-8", "RESULT.evidence lists files with the manifest's sha256"),
    )
    def check_evidence(self) -> None:
        """EVID-3, 4, 6 and 7 by their one implementation (experiment.grading.general) on the manifest's files read from
        evidence/; the run directory's own: every manifest file is on disk, unchanged, and no other file is there."""
        if self.files.manifest is None:
            return
        entries = self.files.evidence_entries
        self.restated("evidence.caps")  # EVID-3 on the files evidence/ holds under the manifest's sha256
        self.restated("evidence.names")  # EVID-7 on the manifest's entries
        evidence_dir = self.files.run_dir / EVIDENCE_DIR
        for entry in entries:
            name = entry.get("name")
            path = evidence_dir / str(name)
            if not isinstance(name, str) or "/" in name or not path.is_file():
                self.problem("evidence.missing_file", f"manifest lists {short(name)} but the file is not in evidence/")
                continue
            if hashlib.sha256(path.read_bytes()).hexdigest() != entry.get("sha256"):
                self.problem(
                    "evidence.immutable", f"{name} no longer matches its manifest sha256 (evidence was changed)"
                )
        listed = self.files.evidence_names | {MANIFEST_FILE}
        for path in sorted(evidence_dir.iterdir()) if evidence_dir.is_dir() else []:
            if path.is_file() and not path.name.startswith(".") and path.name not in listed:
                self.problem("evidence.unlisted", f"evidence/{path.name} is not in the manifest")
        self.restated("evidence.required_kinds")  # EVID-4 on the manifest's kinds and the spec's plan
        self.restated("evidence.checkpoints")  # EVID-6 on RESULT, the plan and the predictions in evidence/
        reported = (
            (self.result.get("evidence") or {}).get("files") if isinstance(self.result.get("evidence"), dict) else None
        )
        if isinstance(reported, list):
            manifest_hashes = {entry.get("name"): entry.get("sha256") for entry in entries}
            for item in reported:
                if isinstance(item, dict) and manifest_hashes.get(text_key(item.get("name"))) != item.get("sha256"):
                    self.problem(
                        "evidence.result_files",
                        f"RESULT.evidence lists {short(item.get('name'))} with a sha256 the manifest does not have",
                    )

    # ---- credentials (SEC-1) ----

    @run_dir_checks(
        ("secrets.value", "SEC-1", "no file holds the value of a credential variable"),
        ("secrets.url", "SEC-1", "no file holds a credential-bearing URL"),
        ("secrets.header", "SEC-1", "no file holds a credential header with a value"),
    )
    def check_no_credentials(self) -> None:
        secrets = environment_secrets()
        for path in sorted(self.files.run_dir.rglob("*")):
            if not path.is_file():
                continue
            relative = path.relative_to(self.files.run_dir)
            text = searchable_text(path.read_bytes())
            for name, value in secrets.items():
                if value in text:
                    self.problem("secrets.value", f"{relative} contains the value of {name}")
            url = SIGNED_URL.search(text)
            if url:
                self.problem(
                    "secrets.url", f"{relative} contains a credential-bearing URL (query parameter {url.group(1)})"
                )
            match = HEADER_WITH_VALUE.search(text)
            if match:
                self.problem(
                    "secrets.header", f"{relative} contains a credential header with a value ({match.group(1)}: ...)"
                )
