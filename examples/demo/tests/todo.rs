//! The demo's test suite: it fails until the pipeline has run.

use todo_demo::api::{ApiError, TodoApi};
use todo_demo::model::Todo;
use todo_demo::store::Store;
use todo_demo::validate::validate_title;

#[test]
fn a_new_todo_keeps_its_title_and_is_open() {
    let t = Todo::new(1, "  buy milk ");
    assert_eq!(t.title, "buy milk");
    assert!(!t.done);
}

#[test]
fn blank_and_long_titles_are_refused() {
    assert!(validate_title("write the report").is_ok());
    assert!(validate_title("   ").is_err());
    assert!(validate_title(&"x".repeat(201)).is_err());
}

#[test]
fn the_store_finds_items_by_id() {
    let mut s = Store::new();
    s.insert(Todo::new(7, "seven"));
    assert_eq!(s.get(7).map(|t| t.title.as_str()), Some("seven"));
    assert_eq!(s.all().len(), 1);
}

#[test]
fn create_and_complete() {
    let mut api = TodoApi::new();
    let a = api.create("first").unwrap();
    let b = api.create("second").unwrap();
    assert_eq!((a, b), (1, 2));
    api.complete(a).unwrap();
    assert_eq!(api.complete(9), Err(ApiError::NotFound(9)));
    assert!(matches!(api.create(""), Err(ApiError::InvalidTitle(_))));
}

#[test]
fn errors_say_what_went_wrong() {
    assert_eq!(ApiError::NotFound(3).to_string(), "no to-do with id 3");
    assert_eq!(
        ApiError::InvalidTitle("the title is blank".into()).to_string(),
        "invalid title: the title is blank"
    );
}

#[test]
fn listing_open_items_only() {
    let mut api = TodoApi::new();
    let a = api.create("a").unwrap();
    api.create("b").unwrap();
    api.complete(a).unwrap();
    assert_eq!(api.list(false).len(), 2);
    let open: Vec<String> = api.list(true).into_iter().map(|t| t.title).collect();
    assert_eq!(open, vec!["b"]);
}
