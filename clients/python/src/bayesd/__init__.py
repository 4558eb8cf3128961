"""Python client of bayesd, the Bayesian-optimisation HTTP service (standard library only).

    from bayesd import Client
    study = Client("http://127.0.0.1:8080").create_study("demo", [{"name": "x", "type": "float", "low": 0, "high": 1}])
    s = study.suggest()
    study.observe(s, -(s["x"] - 0.3) ** 2)
"""

from .client import (
    Best,
    Client,
    Observation,
    Prediction,
    Study,
    Suggestion,
    __version__,
    categorical_param,
    float_param,
    int_param,
)
from .errors import (
    APIError,
    BadRequest,
    BayesdError,
    Conflict,
    FieldError,
    NotFound,
    PayloadTooLarge,
    ServiceUnavailable,
    TransportError,
    Unauthorized,
    UnsupportedMediaType,
    ValidationError,
)

__all__ = [
    "APIError",
    "BadRequest",
    "BayesdError",
    "Best",
    "Client",
    "Conflict",
    "FieldError",
    "NotFound",
    "Observation",
    "PayloadTooLarge",
    "Prediction",
    "ServiceUnavailable",
    "Study",
    "Suggestion",
    "TransportError",
    "Unauthorized",
    "UnsupportedMediaType",
    "ValidationError",
    "__version__",
    "categorical_param",
    "float_param",
    "int_param",
]
