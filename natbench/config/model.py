"""The base of every model a user writes: unknown keys are errors, field docstrings are the field descriptions."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class SchemaModel(BaseModel):
    """Base of every campaign model: unknown keys are errors, field docstrings are the field descriptions."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, validate_default=True, allow_inf_nan=False)
