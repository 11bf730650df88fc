import sys, time, warnings
warnings.filterwarnings("ignore")
sys.path.insert(0, "/work/main/benchmarks")
import numpy as np
from split_start import split_state, N_ITEMS, N_DIMS, NOISE, TAU
import pymc_crp as pmc
from pymc_crp.core.lists import list_likelihood_cache, order_words
from pymc_crp.step_methods.po_prior_split_merge import SplitMergeState
from pymc_crp.step_methods.po_annealed_split_merge import _Path, annealing_levels

lists, labels, utilities, u0, halves = split_state()
model = pmc.models.clustered_partial_orders(lists.tolist(), N_ITEMS, n_dims=N_DIMS)
point = model.initial_point()
n_slots = point["U"].shape[0]
U = np.random.default_rng(0).normal(scale=0.5, size=(n_slots, N_ITEMS, N_DIMS))
U[: len(utilities)] = utilities
point.update({"cluster": labels, "U": U, "U0": u0})
for k in point:
    if k.startswith("p_") or k == "p": pass
print(list(point))
# set p, tau on their transformed scales via the model's value vars
import pymc as pm
with model:
    ip = model.initial_point()
ivals = {"cluster": labels, "U": U, "U0": u0, "p": NOISE, "tau": TAU}
with model:
    from pymc.initial_point import make_initial_point_fn
    fn = make_initial_point_fn(model=model, overrides=ivals, jitter_rvs=set(), return_transformed=True)
    point = fn(0)
with model:
    step = pmc.PartialOrderLabelGibbs([model["cluster"]], anneal=0, annealed_split_merge=1, annealed_levels=int(sys.argv[1]))
step.tune = False
step.rng = np.random.default_rng(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
theta, discount = (float(v) for v in step._prior_params_fn(point))
noise = float(step._term.noise_fn(point))
step._beta = 1.0
n_lists = labels.size
occupied = np.flatnonzero(np.bincount(labels, minlength=n_slots))
ll = np.zeros((n_lists, n_slots))
for s in occupied:
    ll[:, s] = step._column(U[s], np.arange(n_lists), noise)
print("theta", theta, "d", discount, "noise", noise, "K", occupied.size)
prior = step._slot_prior(point)
def next_draw():
    return step._prior_draws(point)[0]
h1, h2 = halves
s, t = labels[h1[0]], labels[h2[0]]
for rep in range(int(sys.argv[3]) if len(sys.argv) > 3 else 3):
    lab = labels.copy(); uu = U.copy(); lll = ll.copy()
    moves = SplitMergeState(lab, lll, uu, noise, theta, discount, next_draw)
    a = step.rng.choice(h1); b = step.rng.choice(h2)
    others = np.concatenate([h1, h2]); others = others[(others != a) & (others != b)]
    members = np.concatenate(([a, b], step.rng.permutation(others)))
    # instrumented merge
    sides = (lab[members] == t).astype(np.int64)
    path = _Path(members, sides, uu[s].copy(), uu[t].copy(), lll[members, s].copy(), lll[members, t].copy())
    n_clusters = int(np.count_nonzero(moves.counts)) - 1
    levels = annealing_levels(step.annealed_levels)
    log_ratio = 0.0; t0 = time.perf_counter(); trace = []
    for k in range(1, levels.size):
        dd = step._drift(path, moves, n_clusters)
        log_ratio += (levels[k] - levels[k - 1]) * dd
        trace.append((round(levels[k-1], 3), round(dd, 1), int(path.sides.sum()), round(float(path.ll_s.sum()), 1)))
        if k < levels.size - 1:
            step._path_scan(path, moves, prior, float(levels[k]), reverse=False)
    print(f"rep {rep}: log ratio {log_ratio:.1f}  ({time.perf_counter() - t0:.1f} s)  final ll_s {path.ll_s.sum():.1f} start split ll {ll[h1, s].sum() + ll[h2, t].sum():.1f}")
    print("  ", trace[:: max(1, len(trace) // 12)])
