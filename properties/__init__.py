"""Hypothesis strategies and stateful machines that drive the model."""
