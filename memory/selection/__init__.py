"""Memories chosen across a tenant's namespaces by who wrote them, a tag or a metadata value (issue #35): one
selection an admin lists, forgets (soft: restorable, with a reason) and erases with.

- `Selection` (`criteria`): the criteria, checked once; a memory is selected when it meets every one given.
- `select_page` / `forget_selected` (`scan`): the tenant's memories read in id order, a bounded number per call
  (`SCAN_LIMIT`), so a call costs the same whatever the tenant holds; a cursor goes on where the last call
  stopped.
"""

from memory.selection.criteria import Selection
from memory.selection.scan import SCAN_LIMIT, ForgetReport, SelectedPage, forget_selected, select_page

__all__ = ["SCAN_LIMIT", "ForgetReport", "SelectedPage", "Selection", "forget_selected", "select_page"]
