// livemed review: the keyboard. 1/2/3 give a verdict, e edits the criterion, u undoes your last
// label, j/k go to the next and previous item. A key acts on the element marked data-key="KEY":
// a button or link is clicked; one with data-focus focuses that field instead. Keys typed into a
// field are left to it (Escape leaves the field).
"use strict";

function typing(target) {
  return target instanceof HTMLElement &&
    (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName));
}

document.addEventListener("keydown", (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey) {
    return;
  }
  if (typing(event.target)) {
    if (event.key === "Escape") {
      event.target.blur();
    }
    return;
  }
  const action = document.querySelector(`[data-key="${CSS.escape(event.key)}"]`);
  if (action === null) {
    return;
  }
  event.preventDefault();
  const field = action.dataset.focus ? document.getElementById(action.dataset.focus) : null;
  if (field !== null) {
    field.focus();
    field.select();
  } else {
    action.click();
  }
});

document.documentElement.dataset.reviewReady = "1";
