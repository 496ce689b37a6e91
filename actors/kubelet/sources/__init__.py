"""Pod sources: the manifest directory and the manifest URL (upstream's static pods)."""
