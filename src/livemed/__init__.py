"""livemed: live, contamination-resistant evaluation of LLMs in medicine."""

__version__ = "0.1.0"

__all__ = ["__version__"]
