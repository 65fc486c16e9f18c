"""Textual `Binding`s made from the key table (`ocms_tui.widgets.keys`), its only source."""

from __future__ import annotations

from textual.binding import Binding, BindingType

from ocms_tui.widgets.keys import Scope, binding_rows


def bindings(scope: Scope) -> list[BindingType]:
    return [
        Binding(
            row.key,
            row.action,
            row.description,
            show=row.show,
            key_display=row.key_display,
            priority=row.priority,
        )
        for row in binding_rows(scope)
    ]
