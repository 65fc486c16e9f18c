"""ocms-tui: live terminal dashboard and CI checker for Octopus ocms training metrics."""

__version__ = "0.1.0"
