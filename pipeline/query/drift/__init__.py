"""DRIFT search: a primer over the nearest community reports, follow-up local searches, a reduce of the tree."""
