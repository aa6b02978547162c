"""The retained files: the evidence manifest against evidence/ and RESULT (EVID-*) and the credential scan
(SEC-1)."""

from __future__ import annotations

import hashlib

from experiment.contract.run_layout import EVIDENCE_DIR, MANIFEST_FILE
from experiment.grading.common import as_dict, as_list, short
from experiment.grading.secrets import HEADER_WITH_VALUE, SIGNED_URL, environment_secrets, searchable_text
from experiment.run.store import MAX_EVIDENCE_FILE_BYTES, MAX_EVIDENCE_FILES, MAX_EVIDENCE_TOTAL_BYTES
from experiment.grading.general import EVID_4
from experiment.grading.registry import run_dir_checks
from experiment.grading.run_dir.files import text_key


class RetainedFileChecks:
    """The retained files: the evidence manifest against evidence/ and RESULT (EVID-*) and the credential scan."""

    # ---- evidence (EVID-*) ----

    @run_dir_checks(
        ("evidence.caps", "EVID-3", "evidence within its caps"),
        ("evidence.missing_file", "EVID-8", "every manifest file is in evidence/"),
        ("evidence.immutable", "EVID-7", "every evidence file still hashes to its manifest sha256"),
        ("evidence.unlisted", "EVID-8", "every file in evidence/ is in the manifest"),
        ("evidence.required_kinds", "EVID-4", "a succeeded run retains the required evidence kinds", EVID_4),
        ("evidence.checkpoints", "EVID-6", "checkpoints are tinker:// references without a query string"),
        ("evidence.result_files", "EVID-8", "RESULT.evidence lists files with the manifest's sha256"),
    )
    def check_evidence(self) -> None:
        if self.files.manifest is None:
            return
        entries = self.files.evidence_entries
        if len(entries) > MAX_EVIDENCE_FILES:
            self.problem("evidence.caps", f"{len(entries)} evidence files exceed the cap of {MAX_EVIDENCE_FILES}")
        total = 0
        evidence_dir = self.files.run_dir / EVIDENCE_DIR
        for entry in entries:
            name = entry.get("name")
            path = evidence_dir / str(name)
            if not isinstance(name, str) or "/" in name or not path.is_file():
                self.problem("evidence.missing_file", f"manifest lists {short(name)} but the file is not in evidence/")
                continue
            data = path.read_bytes()
            total += len(data)
            if len(data) > MAX_EVIDENCE_FILE_BYTES:
                self.problem("evidence.caps", f"{name} is {len(data)} bytes, over the 10 MiB cap")
            if hashlib.sha256(data).hexdigest() != entry.get("sha256"):
                self.problem(
                    "evidence.immutable", f"{name} no longer matches its manifest sha256 (evidence was changed)"
                )
        if total > MAX_EVIDENCE_TOTAL_BYTES:
            self.problem("evidence.caps", f"evidence totals {total} bytes, over the 40 MiB cap")
        listed = self.files.evidence_names | {MANIFEST_FILE}
        for path in sorted(evidence_dir.iterdir()) if evidence_dir.is_dir() else []:
            if path.is_file() and not path.name.startswith(".") and path.name not in listed:
                self.problem("evidence.unlisted", f"evidence/{path.name} is not in the manifest")
        self.restated("evidence.required_kinds")  # EVID-4 on the manifest's kinds and the spec's plan
        for checkpoint in as_list(as_dict(self.result.get("evidence")).get("checkpoints")):
            uri = as_dict(checkpoint).get("uri")
            if not (isinstance(uri, str) and uri.startswith("tinker://") and "?" not in uri):
                self.problem(
                    "evidence.checkpoints",
                    f"checkpoint {short(uri)} is not a tinker:// reference without a query string",
                )
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
