"""Performance models: predict log(time) of configurations from their encoded features.

All models share `fit(X, y)` and `predict(X) -> (mean, std)` with `y = log(seconds)`. Working in
log space makes squared error a relative error (Falch & Elster, section 5.3): a 10% miss on a
1 ms kernel weighs as much as on a 1 s one, and the few very slow configurations do not dominate
training. `std` is the model's own estimate of its error at each point; the ML strategy turns it
into the probability that an unmeasured configuration beats the best one so far (Eq. 2).

The bagged neural network follows the paper (k = 11 networks, each trained on all folds but
one, averaged), but trains the k members as one batched model: the weights carry a leading
member dimension and each layer is one batched matrix product, so 11 networks cost about as
much as one in Python overhead. Each member stops early on its own held-out fold; the
out-of-fold predictions give an honest error estimate for free. A tuning run fits networks of a
few dozen to a few hundred samples, where each of a thousand epochs costs a few dozen tiny tensor
operations: the gradients are written out by hand (`_gradients`, checked against torch's autograd
in the tests), which takes the autograd graph's bookkeeping off every epoch, and tanh is computed
as 2·sigmoid(2x) − 1, which torch's CPU kernels evaluate several times faster than `tanh`.
"""
from __future__ import annotations

import math
import threading
from typing import Callable, Optional, Protocol, Sequence

import numpy as np

from ..errors import did_you_mean

PREDICT_CHUNK = 1 << 16
ACTIVATIONS = ("tanh", "sigmoid", "relu", "silu")  # the bagged network's (BaggedNeuralNetwork._activate)


class Model(Protocol):
    def fit(self, X: np.ndarray, y: np.ndarray) -> "Model": ...

    def predict(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...


def _check(X: np.ndarray, y: Optional[np.ndarray] = None) -> tuple[np.ndarray, Optional[np.ndarray]]:
    X = np.asarray(X, dtype=np.float32)
    if X.ndim != 2:
        raise ValueError(f"features must be a 2-D array, got shape {X.shape}")
    if y is not None:
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if len(y) != len(X):
            raise ValueError(f"{len(X)} feature rows but {len(y)} targets")
        if not np.all(np.isfinite(y)):
            raise ValueError("targets must be finite log-times (leave failed configurations out)")
    return X, y


class _Adam:
    """Plain Adam. torch.optim would do, but importing it pulls in torch._dynamo (seconds)."""

    def __init__(self, params: list, lr: float, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> None:
        import torch

        self.params, self.lr, self.betas, self.eps, self.t = params, lr, betas, eps, 0
        self.m = [torch.zeros_like(p) for p in params]
        self.v = [torch.zeros_like(p) for p in params]

    def step(self, grads: list) -> None:
        """One update of every parameter from its gradient in `grads` (same order)."""
        self.t += 1
        b1, b2 = self.betas
        c1, c2 = 1 - b1 ** self.t, 1 - b2 ** self.t
        for p, g, m, v in zip(self.params, grads, self.m, self.v):
            m.mul_(b1).add_(g, alpha=1 - b1)
            v.mul_(b2).addcmul_(g, g, value=1 - b2)
            p.addcdiv_(m, v.sqrt().add_(self.eps * math.sqrt(c2)), value=-self.lr * math.sqrt(c2) / c1)


class ConstantModel:
    """Predicts the training mean: the baseline every real model must beat."""

    def fit(self, X: np.ndarray, y: np.ndarray) -> "ConstantModel":
        _, y = _check(X, y)
        self.mean_ = float(y.mean()) if len(y) else 0.0
        self.std_ = float(y.std()) if len(y) > 1 else 1.0
        return self

    def predict(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = len(X)
        return np.full(n, self.mean_), np.full(n, self.std_)


class BaggedNeuralNetwork:
    """k small MLPs (tanh, `hidden` units per layer) on k-fold bags, trained together in torch.

    Member i trains on every fold except fold i and early-stops on fold i (the paper's bagging
    scheme). Training is full-batch Adam: training sets here are hundreds to a few thousand
    samples, where full batches are both fastest and deterministic.
    """

    def __init__(self, k: int = 11, hidden: Sequence[int] = (32,), epochs: int = 1500, lr: float = 0.02,
                 weight_decay: float = 1e-4, patience: int = 200, check_every: int = 10,
                 activation: str = "tanh", seed: int = 0, threads: int = 2) -> None:
        if k < 2:
            raise ValueError("bagging needs k >= 2 members")
        if not hidden or any(int(h) < 1 for h in hidden):
            raise ValueError(f"hidden needs one or more layers of at least one unit, got {tuple(hidden)!r}")
        if activation not in ACTIVATIONS:
            close = did_you_mean(activation, ACTIVATIONS)
            raise ValueError(f"unknown activation '{activation}'" + (f" (did you mean '{close}'?)" if close else "")
                             + f"; known: {', '.join(ACTIVATIONS)}")
        self.k = k
        self.hidden = tuple(int(h) for h in hidden)
        self.epochs = epochs
        self.lr = lr
        self.weight_decay = weight_decay
        self.patience = patience
        self.check_every = check_every
        self.activation = activation
        self.seed = seed
        self.threads = threads
        self.cv_rmse_: float = float("nan")
        self.epochs_run_: int = 0

    # ---- training --------------------------------------------------------------------------
    def fit(self, X: np.ndarray, y: np.ndarray) -> "BaggedNeuralNetwork":
        import torch

        X, y = _check(X, y)
        n = len(X)
        if n < 4:  # too few points to hold any out: fall back to the mean
            self._const = ConstantModel().fit(X, y)
            self.cv_rmse_ = self._const.std_
            return self
        self._const = None
        saved_threads = torch.get_num_threads()
        # tiny batched matmuls: one thread avoids spin-waiting on a loaded machine
        torch.set_num_threads(1 if n * min(self.k, n) * max(self.hidden, default=1) < 1 << 22 else self.threads)
        try:
            return self._fit(X, y, torch)
        finally:
            torch.set_num_threads(saved_threads)

    def _fit(self, X: np.ndarray, y: np.ndarray, torch) -> "BaggedNeuralNetwork":
        n = len(X)
        gen = torch.Generator().manual_seed(self.seed)
        rng = np.random.default_rng(self.seed)
        k = min(self.k, n)
        folds = rng.permutation(n) % k
        self.y_mean_, self.y_std_ = float(y.mean()), float(y.std()) or 1.0

        xt = torch.from_numpy(X)
        yt = torch.from_numpy(((y - self.y_mean_) / self.y_std_).astype(np.float32))
        member = torch.arange(k)[:, None]
        val_mask = torch.from_numpy(folds)[None, :] == member            # (k, n)
        train_w = (~val_mask).float() / (~val_mask).float().sum(1, keepdim=True)
        val_w = val_mask.float() / val_mask.float().sum(1, keepdim=True).clamp(min=1)

        flat, params = self._init_params(k, X.shape[1], gen)
        gradient, grads = self._views(k, X.shape[1])
        adam = _Adam([flat], self.lr)  # one tensor: Adam's few operations cover every parameter at once
        best = [p.clone() for p in params]
        best_val = torch.full((k,), float("inf"))
        since = torch.zeros(k, dtype=torch.long)
        # the loss's gradient with respect to the output: 2 (pred - y) w, as (k, n, 1)
        target, scale = yt.view(1, n, 1), (2 * train_w).unsqueeze(-1)
        epoch = 0
        for epoch in range(1, self.epochs + 1):
            self._gradients(params, grads, xt, target, scale)
            adam.step([gradient])
            if epoch % self.check_every == 0 or epoch == self.epochs:
                with torch.no_grad():
                    val = ((self._forward(params, xt) - yt) ** 2 * val_w).sum(1)
                    better = val < best_val * (1 - 1e-4)
                    best_val = torch.where(better, val, best_val)
                    since = torch.where(better, torch.zeros_like(since), since + self.check_every)
                    for b, p in zip(best, params):
                        shape = (k,) + (1,) * (p.dim() - 1)
                        b.copy_(torch.where(better.view(shape), p.detach(), b))
                if bool((since >= self.patience).all()):
                    break
        self.epochs_run_ = epoch
        self.params_ = best
        with torch.no_grad():
            pred = self._forward(best, xt).numpy()                         # (k, n)
        oof = pred[folds, np.arange(n)] * self.y_std_ + self.y_mean_
        self.cv_rmse_ = float(np.sqrt(np.mean((oof - y) ** 2)))
        self.oof_ = oof
        return self

    def _views(self, k: int, width: int) -> tuple:
        """A zeroed flat tensor and its views as each layer's weights (k, in, out) and biases
        (k, 1, out), in order."""
        import torch

        sizes = (width,) + self.hidden + (1,)
        shapes = [shape for a, b in zip(sizes[:-1], sizes[1:]) for shape in ((k, a, b), (k, 1, b))]
        flat = torch.zeros(sum(math.prod(shape) for shape in shapes))
        views, start = [], 0
        for shape in shapes:
            views.append(flat[start:start + math.prod(shape)].view(shape))
            start += math.prod(shape)
        return flat, views

    def _init_params(self, k: int, width: int, gen) -> tuple:
        """The initial parameters: a flat tensor and its views (`_views`)."""
        import torch

        flat, params = self._views(k, width)
        for w in params[0::2]:
            bound = math.sqrt(6.0 / (w.shape[1] + w.shape[2]))  # Glorot: keeps tanh/sigmoid units out of saturation
            w.copy_((torch.rand(w.shape, generator=gen) * 2 - 1) * bound)
        return flat, params

    def _activate(self, z):
        """The activation of pre-activations `z`, in place."""
        import torch

        if self.activation == "tanh":
            return torch.sigmoid_(z.mul_(2)).mul_(2).sub_(1)
        if self.activation == "sigmoid":
            return torch.sigmoid_(z)
        if self.activation == "relu":
            return torch.relu_(z)
        return torch.nn.functional.silu(z, inplace=True)

    def _gradients(self, params: list, grads: list, x, target, scale) -> list:
        """The gradients of the training loss, sum over members of sum_j scale_kj (f_k(x_j) -
        target_j)^2 / 2 plus the weight decay on the weights, with respect to `params`, written
        into `grads` (same shapes and order) and returned: one forward pass keeping each layer's
        activations, then the chain rule back through them (members as the batch dimension of
        every product)."""
        import torch

        inputs, pre = [], []
        a = x                                                          # (n, i), then (k, n, h)
        for i in range(0, len(params) - 2, 2):
            z = torch.matmul(a, params[i]) if a.dim() == 2 else torch.bmm(a, params[i])
            z.add_(params[i + 1])
            inputs.append(a)
            pre.append(z.clone() if self.activation == "silu" else None)
            a = self._activate(z)
        # the output layer's products are matrix-vector products, which torch's batched matrix
        # product is several times slower at than a broadcast multiply and a sum
        k, h = a.shape[0], a.shape[2]
        w_out, b_out = params[-2].view(k, 1, h), params[-1]            # (k, 1, h), (k, 1, 1)
        g = torch.sum(a * w_out, 2, keepdim=True).add_(b_out).sub_(target).mul_(scale)  # dloss/dout, (k, n, 1)
        torch.sum(a * g, 1, out=grads[-2].view(k, h))
        torch.sum(g, 1, keepdim=True, out=grads[-1])
        da = g * w_out                                                 # (k, n, h)
        for i in range(len(params) - 4, -1, -2):
            dz = da.mul_(self._derivative(a, pre[i // 2]))
            below = inputs[i // 2]
            if below.dim() == 2:
                torch.matmul(below.t(), dz, out=grads[i])
            else:
                torch.bmm(below.transpose(1, 2), dz, out=grads[i])
            torch.sum(dz, 1, keepdim=True, out=grads[i + 1])
            if i:
                da, a = torch.bmm(dz, params[i].transpose(1, 2)), below
        if self.weight_decay:
            for i in range(0, len(params), 2):
                grads[i].add_(params[i], alpha=2 * self.weight_decay)
        return grads

    def _derivative(self, a, z):
        """The activation's derivative at the layer whose output is `a` (pre-activation `z`)."""
        import torch

        if self.activation == "tanh":
            return 1 - a * a
        if self.activation == "sigmoid":
            return a * (1 - a)
        if self.activation == "relu":
            return (a > 0).to(a.dtype)
        s = torch.sigmoid(z)
        return s * (1 + z * (1 - s))

    def _forward(self, params: list, x):
        """All members at once, (n, width) -> (k, n).

        The first layer of all k members is one (n, width) x (width, k*h) GEMM, the output layer
        a multiply-and-sum: no per-member copies of the inputs, which matters when predicting
        millions of configurations.
        """
        import torch

        w, b = params[0], params[1]                                   # (k, i, h), (k, 1, h)
        k, width, hidden = w.shape
        h = (x @ w.permute(1, 0, 2).reshape(width, k * hidden)).view(-1, k, hidden).add_(b.view(1, k, hidden))
        for i in range(2, len(params) - 2, 2):                         # hidden-to-hidden layers
            h = torch.baddbmm(params[i + 1], self._activate(h).transpose(0, 1), params[i]).transpose(0, 1)
        w_out, b_out = params[-2], params[-1]                          # (k, h, 1), (k, 1, 1)
        out = (self._activate(h) * w_out.view(1, k, -1)).sum(-1) + b_out.view(1, k)
        return out.t()

    # ---- prediction ------------------------------------------------------------------------
    def predict_members(self, X: np.ndarray) -> np.ndarray:
        """Each member's prediction of log(time), shape (k, n)."""
        import torch

        X, _ = _check(X)
        saved_threads = torch.get_num_threads()
        torch.set_num_threads(1 if len(X) < 4096 else self.threads)
        out = np.empty((len(self.params_[0]), len(X)), dtype=np.float64)
        try:
            with torch.no_grad():
                for s in range(0, len(X), PREDICT_CHUNK):
                    part = self._forward(self.params_, torch.from_numpy(X[s:s + PREDICT_CHUNK]))
                    out[:, s:s + PREDICT_CHUNK] = part.numpy()
        finally:
            torch.set_num_threads(saved_threads)
        return out * self.y_std_ + self.y_mean_

    def predict(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self._const is not None:
            return self._const.predict(X)
        members = self.predict_members(X)
        mean = members.mean(0)
        # the out-of-fold error covers what the bag gets wrong everywhere; the members'
        # disagreement adds where this point is far from the training data
        std = np.sqrt(self.cv_rmse_ ** 2 + members.var(0))
        return mean, std


class SklearnModel:
    """A scikit-learn regressor behind the common interface.

    `std` is the k-fold cross-validated RMSE (the same at every point): these models have no
    cheap per-point uncertainty that is comparable across kinds.
    """

    def __init__(self, make: Callable[[], object], standardize: bool = True, cv: int = 5, seed: int = 0) -> None:
        self.make = make
        self.standardize = standardize
        self.cv = cv
        self.seed = seed
        self.cv_rmse_: float = float("nan")

    def fit(self, X: np.ndarray, y: np.ndarray) -> "SklearnModel":
        X, y = _check(X, y)
        self.y_mean_, self.y_std_ = (float(y.mean()), float(y.std()) or 1.0) if self.standardize else (0.0, 1.0)
        z = (y - self.y_mean_) / self.y_std_
        if len(y) >= 2 * self.cv:
            from sklearn.model_selection import KFold, cross_val_predict

            oof = cross_val_predict(self.make(), X, z, cv=KFold(self.cv, shuffle=True, random_state=self.seed))
            self.cv_rmse_ = float(np.sqrt(np.mean((oof - z) ** 2))) * self.y_std_
        else:
            self.cv_rmse_ = float(y.std()) if len(y) > 1 else 1.0
        self.estimator_ = self.make()
        self.estimator_.fit(X, z)
        return self

    def predict(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        X, _ = _check(X)
        out = np.empty(len(X))
        for s in range(0, len(X), PREDICT_CHUNK):
            out[s:s + PREDICT_CHUNK] = self.estimator_.predict(X[s:s + PREDICT_CHUNK])
        return out * self.y_std_ + self.y_mean_, np.full(len(X), self.cv_rmse_)


def svr(seed: int = 0, **kw) -> SklearnModel:
    from sklearn.svm import SVR

    return SklearnModel(lambda: SVR(**{"C": 10.0, "epsilon": 0.02, "gamma": "scale", **kw}), seed=seed)


def boosted_trees(seed: int = 0, **kw) -> SklearnModel:
    """AdaBoost over regression trees: the paper's boosted regression tree."""
    from sklearn.ensemble import AdaBoostRegressor
    from sklearn.tree import DecisionTreeRegressor

    depth = kw.pop("max_depth", 8)
    return SklearnModel(lambda: AdaBoostRegressor(DecisionTreeRegressor(max_depth=depth, random_state=seed),
                                                  **{"n_estimators": 100, "random_state": seed, **kw}), seed=seed)


def random_forest(seed: int = 0, **kw) -> SklearnModel:
    from sklearn.ensemble import RandomForestRegressor

    return SklearnModel(lambda: RandomForestRegressor(**{"n_estimators": 200, "min_samples_leaf": 1,
                                                         "n_jobs": 2, "random_state": seed, **kw}), seed=seed)


def gradient_boosting(seed: int = 0, **kw) -> SklearnModel:
    from sklearn.ensemble import GradientBoostingRegressor

    return SklearnModel(lambda: GradientBoostingRegressor(**{"n_estimators": 300, "max_depth": 4,
                                                             "learning_rate": 0.05, "subsample": 0.8,
                                                             "random_state": seed, **kw}), seed=seed)


def bagged_nn(seed: int = 0, **kw) -> BaggedNeuralNetwork:
    return BaggedNeuralNetwork(seed=seed, **kw)


def constant(seed: int = 0, **kw) -> ConstantModel:
    return ConstantModel()


MODELS: dict[str, Callable[..., Model]] = {
    "bnn": bagged_nn,
    "svr": svr,
    "adaboost": boosted_trees,
    "random_forest": random_forest,
    "gradient_boosting": gradient_boosting,
    "constant": constant,
}


def make_model(name: str, seed: int = 0, **kw) -> Model:
    """A fresh model by name (see MODELS); keyword arguments go to the model's constructor."""
    if name not in MODELS:
        close = did_you_mean(name, MODELS)
        hint = f" (did you mean '{close}'?)" if close else ""
        raise ValueError(f"unknown model '{name}'{hint}; known: {', '.join(MODELS)}")
    return MODELS[name](seed=seed, **kw)



_IMPORTING: list = []


def import_in_background() -> None:
    """Import the models' libraries (torch, scikit-learn) in a thread, once per process: seconds
    on a cold start (torch with CUDA: 3-6 s), which a live search would otherwise spend at its
    first fit, after its first stage, rather than while the measurement worker starts and the
    baseline runs. Importing is all it does: no result depends on it."""
    if _IMPORTING:
        return

    def run() -> None:
        try:
            import sklearn.linear_model  # noqa: F401
            import torch  # noqa: F401
        except Exception:  # noqa: BLE001 - the fit imports them again and reports what is missing
            pass

    thread = threading.Thread(target=run, name="imagecl-model-imports", daemon=True)
    _IMPORTING.append(thread)
    thread.start()

__all__ = ["Model", "ConstantModel", "BaggedNeuralNetwork", "SklearnModel", "svr", "boosted_trees",
           "random_forest", "gradient_boosting", "MODELS", "make_model", "PREDICT_CHUNK"]
