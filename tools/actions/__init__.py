"""Actions with consequences that a customer confirms: one mechanism, one
definition per action.

- `definition.py`: `ActionDefinition`, what a shop developer writes for an action: its
  name and proposing tool's arguments, the state and policy check, the card's exact
  effect and result words, and the backend call.
- `builtin.py`: the three built in: `cancel_order`, `request_return` and `change_address`.
- `propose.py`: the proposing tool every definition gets (`propose_<name>`): ownership
  (the order lookups' rule), state and policy are checked by the application, never the
  model; an allowed action is stored pending (storage/actions.py) and noted
  (`ActionProposed`), which ends the turn suspended with a confirmation card.

Carrying out a confirmed action is services/actions.py's (exactly once, by operation id).
"""
