"""The preflights' records: correctness preflight (CORR-*) and initialization provenance (REST-*), each by the
contract rule's one implementation (experiment.grading.correctness, experiment.grading.restoration) on the run
directory's RESULT, retained spec and evidence/ files. The run directory supplies what a bare record cannot: whether
the gate passed (a missing record is a problem only then) and whether the run went on past a check."""

from __future__ import annotations

from experiment.grading.correctness import (
    CORR_1, CORR_1_stock_only, CORR_2, CORR_3, CORR_4, CORR_4_on_input, CORR_5, CORR_6_reported, CORR_6_revision_check,
    CORR_9,
)
from experiment.grading.registry import run_dir_checks
from experiment.grading.restoration import (
    REST_1, REST_1_runs, REST_2, REST_2_seed, REST_3, REST_3_checkpoint, REST_4, REST_4_restores, REST_5, REST_6,
    REST_6_response, REST_7, REST_7_fixed_batch, REST_8,
)


class PreflightChecks:
    """The preflights' records: correctness preflight (CORR-*) and initialization provenance (REST-*)."""

    # ---- correctness preflight (CORR-*) ----

    @run_dir_checks(
        ("correctness.missing", "CORR-1", "a passed correctness gate left its record", CORR_1),
        ("correctness.required", "CORR-1", "a custom or forked path's record says required true", CORR_1),
        ("correctness.stock_only", "CORR-1", "a stock-only run's record is {required: false, paths: []}",
         CORR_1_stock_only),
        ("correctness.paths", "CORR-2", "one record per spec path and no other, each of the contract's shape", CORR_2),
        ("correctness.errors", "CORR-3", "measured errors for every tolerance key", CORR_3),
        ("correctness.lr_scaling", "CORR-5", "LR scaling probes within the spec's tolerance, covering the planned rates",
         CORR_5),
        ("correctness.revisions", "CORR-6", "reported revisions are the pins", CORR_6_reported,
         CORR_6_revision_check),
        ("correctness.fixed_input", "CORR-9", "the fixed input and the reference code are retained", CORR_9),
        ("correctness.unresolved_note", "CORR-6", "UNRESOLVED spec revisions are named as unverified in reasoning"),
    )
    def check_correctness(self) -> None:
        """CORR-1..6 and CORR-9 by their one implementation; a missing record is a problem once the gate passed.
        The unresolved note is this layer's own: the reasoning of a run whose spec leaves its revisions UNRESOLVED
        says the exchange may grade the check unverified."""
        if "correctness_preflight" not in self.result or self.result["correctness_preflight"] in (None, {}):
            if self.section_required("correctness_preflight"):
                self.restated("correctness.missing")
            return
        if self.contract.gate_applicable("correctness_preflight") is False:  # the plan of the retained spec
            self.restated("correctness.stock_only")
            return
        self.restated("correctness.required")
        self.restated("correctness.paths")
        self.restated("correctness.errors")
        self.restated("correctness.lr_scaling")
        self.restated("correctness.revisions")
        self.restated("correctness.fixed_input")
        self._check_acceptance()
        spec_paths = [path for path in (self.spec.get("correctness_preflight") or {}).get("paths", [])
                      if isinstance(path, dict)]
        unresolved = any(isinstance(path.get(key), str) and "UNRESOLVED" in path[key]
                         for path in spec_paths for key in ("baseline_revision", "reference_revision"))
        reasoning = str(self.result.get("reasoning", "")).lower()
        if unresolved and self.vocabulary == "direction_confidence" and "reasoning" in self.result \
                and "unverified" not in reasoning:
            self.problem(
                "correctness.unresolved_note",
                "the spec's correctness revisions are UNRESOLVED; reasoning must say the exchange may grade the check unverified",
            )

    @run_dir_checks(
        ("correctness.acceptance", "CORR-4", "no run went on past a check that fails its tolerance", CORR_4,
         CORR_4_on_input),
    )
    def _check_acceptance(self) -> None:
        """CORR-4 by its one implementation, where the run directory shows the run went on past the preflight (the
        gate passed or the run succeeded): a run stopped at a failed check did what the contract asks."""
        if self.files.gate_passed("correctness_preflight") or self.result.get("status") == "succeeded":
            self.restated("correctness.acceptance")

    # ---- initialization provenance (REST-*) ----

    @run_dir_checks(
        ("provenance.missing", "REST-1", "a passed restoration gate left initialization_provenance", REST_1),
        ("provenance.shape", "REST-1", "initialization_provenance is {version: 1, arms} with an entry per restoration "
                                       "arm (and per planned LR run)", REST_1, REST_1_runs),
        ("provenance.initialization", "REST-2", "initialization proof before the first update, at the scheduled seed",
         REST_2, REST_2_seed),
        ("provenance.group_mismatch", "REST-3", "a group's arms load the same initialization", REST_3,
         REST_3_checkpoint),
        ("provenance.optimizer_checks", "REST-4", "one optimizer check at creation and per restore, before updates; "
                                                  "restores counted from their evidence", REST_4, REST_4_restores),
        ("provenance.requested", "REST-5", "the requested optimizer is the spec group's", REST_5),
        ("provenance.optimizer_mismatch", "REST-6", "actual optimizer family and config from a retained server "
                                                    "response, equal to the requested", REST_6, REST_6_response),
        ("provenance.initial_output", "REST-7", "initial_output with hashes before the first update, or a reason",
         REST_7, REST_7_fixed_batch),
        ("provenance.evidence_ref", "REST-8", "every evidence_ref names a retained evidence file", REST_8),
    )
    def check_initialization_provenance(self) -> None:
        """REST-1..8 by their one implementation; a missing record is a problem once the gate passed."""
        if self.result.get("initialization_provenance") in (None, {}):
            if self.section_required("initialization_provenance"):
                self.restated("provenance.missing")
            return
        self.restated("provenance.shape")
        self.restated("provenance.initialization")
        self.restated("provenance.group_mismatch")
        self.restated("provenance.optimizer_checks")
        self.restated("provenance.requested")
        self.restated("provenance.optimizer_mismatch")
        self.restated("provenance.initial_output")
        self.restated("provenance.evidence_ref")
