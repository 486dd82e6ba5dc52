"""The experiments' protocols that the book's pages and the benchmarks share, built on the core and the
workflows (`jeirt.tasks`): `onboarding` (new models' vectors from some of their answers), `new_models`
(held-out draws, few-question and known-question experiments), `dimension` (the sweep over d) and `ood`
(leave one benchmark out). Neither the core nor the workflows import them."""
