"""Research task bundles (`gym/<id>/`): their cards, validation and loading."""
