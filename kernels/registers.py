"""Register budgets of warp-specialized kernels that move registers with setmaxnreg.

A CTA's warps start with the per-thread count the launch gives each of them, and setmaxnreg.inc
can only take registers that other warpgroups of the same CTA released with setmaxnreg.dec
(PTX ISA, setmaxnreg; NumSim's racecheck models this pool and reports a deadlock when an
increase can never be met). So the budgets of a CTA's warpgroups must sum to at most its
warpgroups times their starting count, not to the 512 per thread that 65536 registers suggest.
"""

REGISTERS_PER_SM = 65536
SETMAXNREG_MIN, SETMAXNREG_MAX, SETMAXNREG_STEP = 24, 256, 8


def start_count(warpgroups: int) -> int:
    """Per-thread registers each warp starts with when one CTA of `warpgroups` warpgroups
    fills the SM (launch bounds of 1 CTA per SM), rounded down to setmaxnreg's step."""
    per_thread = REGISTERS_PER_SM // (128 * warpgroups)
    return min(SETMAXNREG_MAX, per_thread // SETMAXNREG_STEP * SETMAXNREG_STEP)


def pool(warpgroups: int) -> int:
    """What the budgets of all `warpgroups` warpgroups may add up to (per thread)."""
    return start_count(warpgroups) * warpgroups
